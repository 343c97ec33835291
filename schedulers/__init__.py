"""Everything that decides: pure Python + numpy, no Ray, no clock, no I/O."""
