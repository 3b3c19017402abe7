"""Job handlers of flowledger's own job types (one module per area). Importing
this package registers them with the worker's handler registry; ``flowledger
worker`` and ``flowledger run`` import it. It also installs the failure
policies of SPEC C-1 as the engine's node-failure hook."""

from flowledger.compensation import policies
from flowledger.handlers import (
    alert_jobs,
    automation_jobs,
    compensation_jobs,
    engine_jobs,
    event_jobs,
    outbound_jobs,
)

__all__ = ["automation_jobs", "compensation_jobs", "engine_jobs", "event_jobs", "outbound_jobs"]
__all__ += ["alert_jobs"]

policies.install()
