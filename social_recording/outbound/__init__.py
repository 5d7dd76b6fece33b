"""Outbound HTTP: what every client that leaves this process (tracker, shortlinks, providers) shares.

Sits between `domain` and the packages that talk to the outside (`upstream`, `platforms`); it knows
nothing about tokens or the store. `observe` lets the recording engine watch and veto each request
of one URL's invocation without the generators knowing about locks or attempts.
"""
