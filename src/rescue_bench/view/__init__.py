"""``rescue-bench view``: a read-only browser view of run directories (overview, instances, one instance with
its transcript and messages, comparison of runs, confusion matrices), served locally or written as a static
bundle. See docs/viewer.md."""
