"""freshness: index_state, confluence_pages, scheduler_locks

Written by hand to match indexer/freshness/models.py. APScheduler's ``apscheduler_jobs``
table is created by its SQLAlchemyJobStore on first start, not here.

Revision ID: 0004_freshness
Revises: 0003_querylog
Create Date: 2026-11-30 20:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0004_freshness'
down_revision = '0003_querylog'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('index_state',
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('commit', sa.String(length=64), nullable=False),
    sa.Column('indexed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('cursor', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_reconciled_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('last_mode', sa.String(length=20), nullable=False),
    sa.PrimaryKeyConstraint('name', name='pk_index_state')
    )
    op.create_table('confluence_pages',
    sa.Column('source', sa.String(length=200), nullable=False),
    sa.Column('page_id', sa.String(length=64), nullable=False),
    sa.Column('title', sa.String(length=500), nullable=False),
    sa.Column('path', sa.String(length=1000), nullable=False),
    sa.Column('url', sa.String(length=2000), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('last_modified', sa.String(length=64), nullable=False),
    sa.Column('space', sa.String(length=200), nullable=False),
    sa.Column('indexed_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('source', 'page_id', name='pk_confluence_pages')
    )
    op.create_table('scheduler_locks',
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('owner', sa.String(length=200), nullable=False),
    sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name', name='pk_scheduler_locks')
    )


def downgrade() -> None:
    op.drop_table('scheduler_locks')
    op.drop_table('confluence_pages')
    op.drop_table('index_state')
