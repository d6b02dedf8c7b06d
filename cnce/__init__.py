"""cnce: conditional noise-contrastive estimation (Ceylan & Gutmann, 2018)."""
__version__ = "0.1.0"
