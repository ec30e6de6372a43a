"""``python -m bot.cli``."""
from . import main

main()
