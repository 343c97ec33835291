"""HTCondor: ClassAd matchmaking and its daemons (pure halves, no Ray)."""
