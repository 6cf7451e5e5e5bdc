"""``rescue-bench view``: a read-only browser view of run directories (overview, leaderboard with rank groups,
many-way compare, instances, one instance with its transcript and messages, confusion matrices), served
locally or written as a static bundle (a few pages and one page application over compressed data files).
See docs/viewer.md."""
