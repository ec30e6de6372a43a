"""graph: index code_edges by (repo, caller_path, caller_symbol)

The neighbour query of retrieval expansion (``graph_neighbours``) selects one caller's
edges by path *and* symbol. With only ``(repo, caller_path)`` SQLite's planner (no
statistics) preferred ``ix_code_edges_callee`` on ``repo`` alone and scanned the whole
repo's edges: ~0.6 s per seed on sqlalchemy's 205k edges. The wider index replaces the
old one (its prefix serves the per-file deletes of ``replace_files``).

Revision ID: 0007_edge_caller_symbol
Revises: 0006_drift_experts
Create Date: 2026-12-01 19:00:00
"""
from alembic import op


revision = '0007_edge_caller_symbol'
down_revision = '0006_drift_experts'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('code_edges', schema=None) as batch_op:
        batch_op.create_index('ix_code_edges_caller_symbol', ['repo', 'caller_path', 'caller_symbol'], unique=False)
        batch_op.drop_index('ix_code_edges_caller')


def downgrade() -> None:
    with op.batch_alter_table('code_edges', schema=None) as batch_op:
        batch_op.create_index('ix_code_edges_caller', ['repo', 'caller_path'], unique=False)
        batch_op.drop_index('ix_code_edges_caller_symbol')
