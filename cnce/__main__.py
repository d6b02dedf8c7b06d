from cnce.cli import entry

entry()
