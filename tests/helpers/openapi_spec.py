"""A small shop API spec (OpenAPI 3.0, spec version 3.2.1) with 10 operations, its
Swagger 2.0 cousin, and a malformed one, for the OpenAPI chunker."""
from __future__ import annotations

import json

SPEC_YAML = """openapi: 3.0.3
info:
  title: Shop API
  version: 3.2.1
paths:
  /orders:
    get:
      summary: List orders
      description: Pages through the customer's orders, newest first.
      parameters:
        - $ref: '#/components/parameters/Page'
      responses:
        '200':
          description: A page of orders
          content:
            application/json:
              schema:
                type: array
                items:
                  $ref: '#/components/schemas/Order'
    post:
      summary: Create an order
      description: Places an order for the items in the cart and reserves the stock.
      requestBody:
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/NewOrder'
      responses:
        '201':
          description: The created order
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Order'
  /orders/{id}:
    parameters:
      - name: id
        in: path
        required: true
        schema:
          type: string
    get:
      summary: Get an order
      description: Returns one order with its line items and totals.
      responses:
        '200':
          description: The order
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Order'
        '404':
          description: No such order
    delete:
      summary: Cancel an order
      description: Cancels an order that has not shipped yet and releases its stock.
      responses:
        '204':
          description: Cancelled
  /orders/{id}/refunds:
    post:
      summary: Refund an order
      description: Refunds part or all of a paid order to the original payment method.
      requestBody:
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/Refund'
      responses:
        '202':
          description: Refund accepted
  /customers/{id}:
    get:
      summary: Get a customer
      description: Returns the customer's profile and default shipping address.
      parameters:
        - name: id
          in: path
          required: true
          schema:
            type: string
      responses:
        '200':
          description: The customer
    patch:
      summary: Update a customer
      description: Changes the customer's email address or default shipping address.
      responses:
        '200':
          description: Updated
  /products:
    get:
      summary: Search products
      description: Full-text search over the product catalogue by name and tag.
      parameters:
        - name: q
          in: query
          schema:
            type: string
      responses:
        '200':
          description: Matching products
  /products/{sku}/stock:
    put:
      summary: Set stock level
      description: Sets the warehouse stock count of one product.
      responses:
        '200':
          description: Stock updated
  /health:
    get:
      summary: Health probe
      description: Answers the load balancer's liveness check.
      responses:
        '200':
          description: Healthy
components:
  parameters:
    Page:
      name: page
      in: query
      schema:
        type: integer
  schemas:
    Order:
      type: object
      properties:
        id:
          type: string
        total:
          type: number
        items:
          type: array
    NewOrder:
      type: object
      properties:
        cart_id:
          type: string
        coupon:
          type: string
    Refund:
      type: object
      properties:
        amount:
          type: number
        reason:
          type: string
"""

#: (symbol, a description a user might search with)
OPERATIONS = [
    ("GET /orders", "page through a customer's orders newest first"),
    ("POST /orders", "place an order for the cart and reserve stock"),
    ("GET /orders/{id}", "fetch one order with its line items and totals"),
    ("DELETE /orders/{id}", "cancel an order that has not shipped"),
    ("POST /orders/{id}/refunds", "refund a paid order to the original payment method"),
    ("GET /customers/{id}", "customer profile and default shipping address"),
    ("PATCH /customers/{id}", "change a customer's email address"),
    ("GET /products", "full-text search over the product catalogue"),
    ("PUT /products/{sku}/stock", "set the warehouse stock count of a product"),
    ("GET /health", "load balancer liveness check"),
]

SWAGGER_JSON = json.dumps({
    "swagger": "2.0", "info": {"title": "Legacy API", "version": "1.4.0"},
    "paths": {"/invoices/{id}": {"get": {
        "summary": "Get an invoice",
        "parameters": [{"name": "id", "in": "path", "required": True, "type": "string"}],
        "responses": {"200": {"description": "The invoice", "schema": {"$ref": "#/definitions/Invoice"}}}}},
        "/invoices": {"post": {"summary": "Create an invoice", "parameters": [
            {"name": "body", "in": "body", "schema": {"$ref": "#/definitions/Invoice"}}],
            "responses": {"201": {"description": "Created"}}}}},
    "definitions": {"Invoice": {"type": "object", "properties": {"number": {"type": "string"},
                                                                  "amount": {"type": "number"}}}},
}, indent=2)

MALFORMED_YAML = """openapi: 3.0.3
info:
  title: Broken API
  version: 0.1.0
paths:
  /orders:
    get:
      summary: List orders
      responses: [unclosed
        '200':
          description: ok
"""

#: A pet store spec whose operations have operationIds (a question names them so).
PETS_YAML = """openapi: 3.0.0
info:
  title: Pet Store
  version: 1.0.0
paths:
  /pets:
    get:
      summary: List all pets
      operationId: listPets
      parameters:
        - name: limit
          in: query
          schema:
            type: integer
      responses:
        '200':
          description: A page of pets
    post:
      summary: Create a pet
      operationId: createPet
      responses:
        '201':
          description: Created
  /pets/{petId}:
    get:
      summary: Info for a specific pet
      description: Returns a pet by its id.
      operationId: showPetById
      parameters:
        - name: petId
          in: path
          required: true
          schema:
            type: string
      responses:
        '200':
          description: The pet
        '404':
          description: No such pet
    delete:
      summary: Remove a pet
      operationId: deletePet
      responses:
        '204':
          description: Removed
"""

#: Valid YAML declaring a spec, but ``paths`` is a list: not splittable by operation.
PATHS_LIST_YAML = """openapi: 3.0.0
info:
  title: Odd API
  version: 0.2.0
paths:
  - path: /pets
    get:
      summary: List all pets
"""

#: The code beside :data:`PETS_YAML`: a handler whose name is close to an operationId's words.
PETS_SERVER = '''"""A tiny pet store server."""


def show_pet(pet_id):
    """Look a pet up by its id and return it as JSON."""
    return {"id": pet_id}


def list_pets(limit=100):
    """Return at most limit pets."""
    return []
'''
