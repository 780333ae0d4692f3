"""General linear methods: B-series from the starting procedure, stability."""
