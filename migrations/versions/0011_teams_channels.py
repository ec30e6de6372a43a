"""admin page: Teams channels in channel policies and review drafts (channel ids up to 255
characters: a Teams channel id, 19:…@thread.tacv2, is longer than Slack's 40), and the
conversation a Teams draft is posted to once approved (review_drafts.target)

Written by hand to match bot/runconfig/models.py.

Revision ID: 0011_teams_channels
Revises: 0010_admin
Create Date: 2026-12-04 12:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0011_teams_channels'
down_revision = '0010_admin'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('channel_policies', schema=None) as batch_op:
        batch_op.alter_column('channel', existing_type=sa.String(length=40), type_=sa.String(length=255),
                              existing_nullable=False)
    with op.batch_alter_table('review_drafts', schema=None) as batch_op:
        batch_op.alter_column('channel', existing_type=sa.String(length=40), type_=sa.String(length=255),
                              existing_nullable=False)
        batch_op.add_column(sa.Column('target', sa.Text(), nullable=True))


def downgrade() -> None:
    # rows of channels the older schema cannot hold (Teams ids) go with it
    op.execute("DELETE FROM channel_policies WHERE length(channel) > 40")
    op.execute("DELETE FROM review_drafts WHERE length(channel) > 40")
    with op.batch_alter_table('review_drafts', schema=None) as batch_op:
        batch_op.drop_column('target')
        batch_op.alter_column('channel', existing_type=sa.String(length=255), type_=sa.String(length=40),
                              existing_nullable=False)
    with op.batch_alter_table('channel_policies', schema=None) as batch_op:
        batch_op.alter_column('channel', existing_type=sa.String(length=255), type_=sa.String(length=40),
                              existing_nullable=False)
