"""Outbound HTTP: what every client that leaves this process (tracker, shortlinks, providers) shares.

Sits between `domain` and the packages that talk to the outside (`upstream`, `platforms`); it knows
nothing about tokens or the store. One concept per module:

- `client`  the one client core: observer and limiter around each request, capped read, guarded
            manual redirects (`OutboundClient`);
- `guard`   the public-address and scheme rule every followed redirect passes (`check_target`);
- `reader`  the size-capped body reader;
- `retry`   the retry policies (free / paid providers, tracker), run by tenacity;
- `limits`  the rate-limit hook (`RequestLimiter`, no-op by default);
- `network` a transport with the DNS and limiter of the network it reaches (`Network`);
- `observe` lets the recording engine watch and veto each request of one URL's invocation without
            the generators knowing about locks or attempts.
"""
