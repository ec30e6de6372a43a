"""privacy: app_secrets (the generated user-id hash salt)

Written by hand to match bot/querylog/models.py (``AppSecret``).

Revision ID: 0005_privacy
Revises: 0004_freshness
Create Date: 2026-12-01 19:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0005_privacy'
down_revision = '0004_freshness'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('app_secrets',
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name')
    )


def downgrade() -> None:
    op.drop_table('app_secrets')
