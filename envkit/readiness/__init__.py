"""GPU readiness without a GPU: what a framework links, opens and loads, and the GPU code it carries."""
