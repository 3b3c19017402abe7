"""One router per area (STYLE): definitions, instances, tasks, schedules, me."""
