"""What runs on the host, with its own Python and the standard library only: the preflight (doctor), the rounds
and their launchers (compose, Kubernetes, SkyPilot), image tags and the files written from the stack list.
One front door runs them all: ``python3 -m bench.host COMMAND`` (``__main__.py``; ``--help`` lists the commands).
"""
