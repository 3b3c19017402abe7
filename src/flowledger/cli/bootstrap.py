"""What a first start needs: the admin user and its token, the demo users,
and the demo data when the database is empty. Used by ``flowledger run`` and
``flowledger demo``; holds no command-line parsing."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import func, select

from flowledger.access.permissions import ALL_PERMISSIONS, INSTANCE_START, TASK_ACT
from flowledger.access.tokens import create_user, issue_token
from flowledger.db.database import Database
from flowledger.db.engine_schema import users, workflow_definitions
from flowledger.demo import load_demo
from flowledger.demo.loader import DEMO_USERS, DemoReport
from flowledger.engine import Engine

ADMIN = "admin"


async def ensure_admin(db: Database, engine: Engine) -> str | None:
    """Create the admin user on first start; returns its new token, or None
    when the admin already existed."""
    async with db.begin() as conn:
        exists = (await conn.execute(select(users.c.id).where(users.c.id == ADMIN))).first()
        if exists is not None:
            return None
        now = engine.clock.now()
        await create_user(
            conn,
            ADMIN,
            display_name="Administrator",
            roles=["admin"],
            permissions=ALL_PERMISSIONS,
            tenants=["*"],
            now=now,
        )
        return await issue_token(conn, ADMIN, now=now)


async def admin_exists(db: Database) -> bool:
    async with db.read() as conn:
        row = (await conn.execute(select(users.c.id).where(users.c.id == ADMIN))).first()
        return row is not None


async def ensure_demo_users(db: Database, engine: Engine) -> None:
    async with db.begin() as conn:
        known = set((await conn.execute(select(users.c.id))).scalars())
        for name in DEMO_USERS:
            if name not in known:
                await create_user(
                    conn,
                    name,
                    roles=["staff"],
                    permissions=[INSTANCE_START, TASK_ACT],
                    now=engine.clock.now(),
                )


async def is_empty(db: Database) -> bool:
    async with db.read() as conn:
        count = await conn.execute(select(func.count()).select_from(workflow_definitions))
        return int(count.scalar_one()) == 0


async def load_demo_data(
    db: Database, engine: Engine, progress: Callable[[str], None] | None = None
) -> DemoReport:
    await ensure_demo_users(db, engine)
    return await load_demo(engine, progress=progress)
