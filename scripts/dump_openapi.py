"""Write flowledger's OpenAPI document (``create_app(...).openapi()``) to a
file without starting a server; the console's TypeScript client is generated
from it (``make web-client``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from flowledger.api.app import create_app
from flowledger.db.database import Database


def main(out: str) -> None:
    db = Database("sqlite:///openapi-dump.db")  # never connected
    document = create_app(db).openapi()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/openapi.json")
