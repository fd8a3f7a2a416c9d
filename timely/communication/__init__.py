"""Communication between workers: allocators hand out channels.

An allocator gives each logical channel, named by an identifier that every
worker allocates in the same order, one pusher per worker and one puller. What
is pushed to worker ``j``'s pusher arrives, in order, at worker ``j``'s puller
of the same channel.
"""

from timely.communication.allocator import Allocator, ThreadAllocator

__all__ = ["Allocator", "ThreadAllocator"]
