"""A long result as a file in the run's thread, with a short preview pointing at it.

Past ``slack.result_file_chars`` the relay has the whole text uploaded as a file
(``bots.chat.outputs.result_file``; ``files_upload_v2`` gets an upload URL, posts the bytes
there and completes the upload into the thread) and the thread gets :func:`preview`
only. If the upload fails, the relay posts the whole text in pieces instead: nothing is
lost.
"""

from __future__ import annotations

from bots.slack.text import SECTION_LIMIT, truncate

POINTER = "full result in the attached file"


def preview(body: str) -> str:
    """The first part of ``body`` (mrkdwn, escaped) that fits one message, with a note
    saying the rest is in the file."""
    return truncate(body, SECTION_LIMIT, pointer=POINTER)
