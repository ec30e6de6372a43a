"""admin page: run-time configuration (sources, channel policies, values), the change
log and the drafts waiting for review

Written by hand to match bot/runconfig/models.py.

Revision ID: 0010_admin
Revises: 0009_doc_ref_context
Create Date: 2026-12-04 08:10:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0010_admin'
down_revision = '0009_doc_ref_context'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('config_sources',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('url', sa.String(length=1000), nullable=False),
    sa.Column('branch', sa.String(length=200), nullable=False),
    sa.Column('url_template', sa.String(length=1000), nullable=False),
    sa.Column('aliases', sa.Text(), nullable=False),
    sa.Column('ttl_hours', sa.Float(), nullable=True),
    sa.Column('cql', sa.Text(), nullable=True),
    sa.Column('origin', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('deleted_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name='pk_config_sources'),
    sa.UniqueConstraint('name', name='uq_config_sources_name')
    )
    op.create_table('channel_policies',
    sa.Column('channel', sa.String(length=40), nullable=False),
    sa.Column('sources', sa.Text(), nullable=True),
    sa.Column('reply_mode', sa.String(length=16), nullable=False),
    sa.Column('origin', sa.String(length=16), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('deleted_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('channel', name='pk_channel_policies')
    )
    op.create_table('config_values',
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.Column('origin', sa.String(length=16), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name', name='pk_config_values')
    )
    op.create_table('config_changes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('actor', sa.String(length=200), nullable=False),
    sa.Column('action', sa.String(length=40), nullable=False),
    sa.Column('target', sa.String(length=200), nullable=False),
    sa.Column('detail', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('id', name='pk_config_changes')
    )
    op.create_index('ix_config_changes_at', 'config_changes', ['at'], unique=False)
    op.create_table('review_drafts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('ref', sa.String(length=32), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('surface', sa.String(length=16), nullable=False),
    sa.Column('channel', sa.String(length=40), nullable=False),
    sa.Column('thread_ts', sa.String(length=40), nullable=False),
    sa.Column('message_ts', sa.String(length=40), nullable=True),
    sa.Column('question', sa.Text(), nullable=False),
    sa.Column('answer', sa.Text(), nullable=False),
    sa.Column('messages', sa.Text(), nullable=False),
    sa.Column('reviewer', sa.String(length=200), nullable=True),
    sa.Column('decided_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('final_text', sa.Text(), nullable=True),
    sa.Column('posted_ts', sa.String(length=40), nullable=True),
    sa.PrimaryKeyConstraint('id', name='pk_review_drafts')
    )
    op.create_index('ix_review_drafts_status', 'review_drafts', ['status', 'created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_review_drafts_status', table_name='review_drafts')
    op.drop_table('review_drafts')
    op.drop_index('ix_config_changes_at', table_name='config_changes')
    op.drop_table('config_changes')
    op.drop_table('config_values')
    op.drop_table('channel_policies')
    op.drop_table('config_sources')
