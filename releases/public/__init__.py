"""The public side of releases: what anyone may read of a published release."""
