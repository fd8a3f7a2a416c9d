"""The core of frontier notification: requested times released in time order."""

from timely.progress._notificator import NotificationQueue

__all__ = ["NotificationQueue"]
