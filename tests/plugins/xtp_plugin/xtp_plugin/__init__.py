"""An outside task package for the plugin test."""
