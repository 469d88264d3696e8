"""What a saved turn leaves for later: side effects carried out once, timers when due."""
