"""What both sides of coderag share: errors (and exit codes), settings, the SQL engine and
declarative base, identifier splitting. Imports neither ``indexer`` nor ``bot``
(enforced by the import-linter contracts in ``.importlinter``)."""
