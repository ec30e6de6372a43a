"""drift and experts: knowledge_repos, doc_refs, expert_changes

Written by hand to match indexer/drift/models.py and indexer/experts/models.py
(runbook <-> code drift, "who knows this").

Revision ID: 0006_drift_experts
Revises: 0005_privacy
Create Date: 2026-12-01 19:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0006_drift_experts'
down_revision = '0005_privacy'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('knowledge_repos',
    sa.Column('repo', sa.String(length=200), nullable=False),
    sa.Column('root', sa.String(length=2000), nullable=False),
    sa.Column('commit', sa.String(length=64), nullable=False),
    sa.Column('history_commit', sa.String(length=64), nullable=False),
    sa.Column('drift_commit', sa.String(length=64), nullable=False),
    sa.Column('refreshed_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('repo', name='pk_knowledge_repos')
    )
    op.create_table('doc_refs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('source', sa.String(length=200), nullable=False),
    sa.Column('doc', sa.String(length=1000), nullable=False),
    sa.Column('title', sa.String(length=500), nullable=False),
    sa.Column('url', sa.String(length=2000), nullable=False),
    sa.Column('section', sa.String(length=1000), nullable=False),
    sa.Column('section_start', sa.Integer(), nullable=False),
    sa.Column('section_end', sa.Integer(), nullable=False),
    sa.Column('line', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('ref', sa.String(length=500), nullable=False),
    sa.Column('key', sa.String(length=500), nullable=False),
    sa.Column('external', sa.Boolean(), nullable=False),
    sa.Column('status', sa.String(length=10), nullable=False),
    sa.Column('repo', sa.String(length=200), nullable=False),
    sa.Column('evidence', sa.String(length=1200), nullable=False),
    sa.Column('removed_commit', sa.String(length=64), nullable=False),
    sa.Column('removed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('removed_summary', sa.String(length=500), nullable=False),
    sa.Column('new_name', sa.String(length=500), nullable=False),
    sa.Column('new_evidence', sa.String(length=1200), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('checked_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name='pk_doc_refs')
    )
    op.create_index('ix_doc_refs_source_doc', 'doc_refs', ['source', 'doc'], unique=False)
    op.create_index('ix_doc_refs_status', 'doc_refs', ['status'], unique=False)
    op.create_table('expert_changes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('repo', sa.String(length=200), nullable=False),
    sa.Column('path', sa.String(length=1000), nullable=False),
    sa.Column('commit', sa.String(length=64), nullable=False),
    sa.Column('author_name', sa.String(length=300), nullable=False),
    sa.Column('author_email', sa.String(length=300), nullable=False),
    sa.Column('committed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('lines', sa.Integer(), nullable=False),
    sa.Column('excluded', sa.String(length=20), nullable=False),
    sa.PrimaryKeyConstraint('id', name='pk_expert_changes')
    )
    op.create_index('ix_expert_changes_repo_path', 'expert_changes', ['repo', 'path'], unique=False)
    op.create_index('ix_expert_changes_repo_commit', 'expert_changes', ['repo', 'commit'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_expert_changes_repo_commit', table_name='expert_changes')
    op.drop_index('ix_expert_changes_repo_path', table_name='expert_changes')
    op.drop_table('expert_changes')
    op.drop_index('ix_doc_refs_status', table_name='doc_refs')
    op.drop_index('ix_doc_refs_source_doc', table_name='doc_refs')
    op.drop_table('doc_refs')
    op.drop_table('knowledge_repos')
