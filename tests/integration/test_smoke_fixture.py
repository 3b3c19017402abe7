from sqlalchemy import text

from flowledger.db.database import Database


async def test_fixture_gives_empty_schema(db: Database) -> None:
    async with db.read() as conn:
        count = (await conn.execute(text("SELECT count(*) FROM workflow_jobs"))).scalar_one()
    assert count == 0
