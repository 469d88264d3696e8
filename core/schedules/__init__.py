"""Recurring cohorts: rules (core.schedules.rules), claims and policies per firing."""
