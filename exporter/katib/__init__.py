"""Katib without regex: trial objective metrics from what the exporter already reads.

:mod:`.observations` decides what to send (pure); :mod:`.dbmanager` sends it to Katib's DB
manager over gRPC (the optional ``[katib]`` extra, imported only when reporting is on);
:mod:`exporter.kubernetes.katib` reads the Trials and runs the loop.
"""
