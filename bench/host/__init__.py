"""What runs on the host, with its own Python and the standard library only: the preflight (doctor), the rounds
and their launchers (compose, Kubernetes, SkyPilot), image tags and the files written from the stack list.
"""
