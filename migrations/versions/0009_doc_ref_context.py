"""drift: why a doc reference is never stale (a version note, the doc's own example)

Revision ID: 0009_doc_ref_context
Revises: 0008_mcp_source
Create Date: 2026-12-03 18:10:00
"""
import sqlalchemy as sa
from alembic import op


revision = '0009_doc_ref_context'
down_revision = '0008_mcp_source'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('doc_refs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('context', sa.String(length=20), nullable=False, server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('doc_refs', schema=None) as batch_op:
        batch_op.drop_column('context')
