import sys

from cnce.cli import main

sys.exit(main())
