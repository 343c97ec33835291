"""HTCondor's live half: the central manager, schedds and startds as actors."""
