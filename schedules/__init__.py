"""Example deployment schedules and sensors: maintenance of every shop table."""
