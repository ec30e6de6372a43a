"""querylog: the ``mcp`` surface (questions asked by coding agents over MCP)

Revision ID: 0008_mcp_source
Revises: 0007_edge_caller_symbol
Create Date: 2026-12-02 23:59:00
"""
from alembic import op


revision = '0008_mcp_source'
down_revision = '0007_edge_caller_symbol'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('queries', schema=None) as batch_op:
        batch_op.drop_constraint('ck_queries_source', type_='check')
        batch_op.create_check_constraint('ck_queries_source', "source IN ('slack', 'cli', 'teams', 'mcp')")


def downgrade() -> None:
    op.execute("DELETE FROM query_chunks WHERE query_id IN (SELECT id FROM queries WHERE source = 'mcp')")
    op.execute("DELETE FROM queries WHERE source = 'mcp'")
    with op.batch_alter_table('queries', schema=None) as batch_op:
        batch_op.drop_constraint('ck_queries_source', type_='check')
        batch_op.create_check_constraint('ck_queries_source', "source IN ('slack', 'cli', 'teams')")
