"""Linear multistep methods: order, error constant, root condition, stability interval."""
