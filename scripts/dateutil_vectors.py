#!/usr/bin/env python3
"""Writes tests/data/dateutil_vectors.json: how python-dateutil reads a `--before` date.

ringmaster's reading of `nova-manage db archive_deleted_rows --before` and
`nova-manage db purge --before` must agree with Nova, which parses the value with
dateutil.parser.parse(value, fuzzy=True) and no tzinfos. Each vector is a text and either
the instant dateutil gives (naive results taken as UTC, aware ones converted to UTC) or the
exception it raises (a refusal). Two things depend on the real date, and both are pinned so
the Rust test can reproduce every answer: what a text leaves out is filled from
default=datetime(2026, 6, 15) (Nova passes none, so dateutil takes today at midnight), and
two-digit years follow the rule of the year 2026 (parserinfo's _year and _century, which
dateutil otherwise takes from time.localtime()). The local zone matters too (dateutil reads
the names in time.tzname as the local zone), so run under TZ=UTC. Run:
python3 -m venv /tmp/dateutil-venv && /tmp/dateutil-venv/bin/pip install python-dateutil==2.9.0.post0;
then TZ=UTC /tmp/dateutil-venv/bin/python scripts/dateutil_vectors.py > tests/data/dateutil_vectors.json
"""

import json
import os
import random
import sys
import time
import warnings
from datetime import datetime, timezone
from importlib.metadata import version

from dateutil import parser

DATEUTIL_VERSION = version("python-dateutil")

DEFAULT = datetime(2026, 6, 15, 0, 0, 0)
YEAR = 2026


class FixedYearParserInfo(parser.parserinfo):
    """parserinfo whose two-digit-year rule is the one of the year YEAR, whatever today is."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._year = YEAR
        self._century = YEAR // 100 * 100


GROUPS = [
    # ISO 8601 dates, date-times, fractions and basic (compact) forms.
    [
        "2015-10-21",
        "2015-10-21 12:00",
        "2015-10-21T12:00",
        "2015-10-21T12:00:00",
        "2015-10-21 12:00:00",
        "2015-10-21T12:00:00.5",
        "2015-10-21T12:00:00.123",
        "2015-10-21T12:00:00.123456",
        "2015-10-21T12:00:00.1234567",
        "2015-10-21T12:00:00,25",
        "2015-10-21T12",
        "2015-10-21T1200",
        "2015-10-21T120000",
        "20151021",
        "20151021T120000",
        "20151021T1200",
        "20151021T120000Z",
        "20151021T120000.5",
        "2015-10-21T12:00:00Z",
        "2015-10-21T12:00:00z",
        "2015-10-21T12:00:00+02:00",
        "2015-10-21T12:00:00-0500",
        "2015-10-21T12:00:00+02",
        "2015-10-21T12:00:00-00:00",
        "2015-10-21T12:00:00.123456+05:30",
        "2015-10-21 12:00:00+0000",
        "2015-10",
        "2015-W43",
        "2015-W43-3",
        "2015-294",
        "2015-1-2",
        "2015-10-21T",
        "T12:00",
        "2015-10-21T25:00:00",
        "2015-10-21T12:00:00+25:00",
    ],
    # Day/month orders with the separators / . - and space.
    [
        "21/10/2015",
        "10/21/2015",
        "2015/10/21",
        "2015.10.21",
        "21.10.2015",
        "10.21.2015",
        "21-10-2015",
        "10-21-2015",
        "21 10 2015",
        "10 21 2015",
        "2015 10 21",
        "2015-21-10",
        "2015/21/10",
        "01/02/2015",
        "02/01/2015",
        "01.02.2015",
        "01-02-2015",
        "01 02 2015",
        "2015/01/02",
        "1/2/2015",
        "1.2.2015",
        "12/12/2015",
        "13/12/2015",
        "12/13/2015",
        "13/13/2015",
        "0/10/2015",
        "10/0/2015",
        "21/10",
        "10/21",
        "01/02",
        "13/01",
        "21.10.",
        "21.10",
        "2015/10",
        "10/2015",
        "21/10/2015/",
        "21 / 10 / 2015",
        "21 - 10 - 2015",
    ],
    # Two-digit years, in every position dateutil accepts them.
    [
        "10/21/15",
        "21/10/15",
        "15/10/21",
        "01.02.03",
        "1/2/3",
        "01/02/03",
        "01-02-03",
        "03-02-01",
        "32-02-01",
        "01/02/32",
        "15-10-21",
        "15.10.21",
        "151021",
        "211015",
        "Oct 21 15",
        "21 Oct 15",
        "15 Oct 21",
        "Oct 15",
        "Oct 21, 15",
        "Oct 21 '15",
        "'15",
        "Oct '15",
        "21 Oct '15",
        "21 Oct 76",
        "21 Oct 75",
        "21 Oct 77",
        "21 Oct 99",
        "21 Oct 00",
        "21 Oct 50",
        "21 Oct 49",
        "21 Oct 26",
        "10/21/76",
        "10/21/75",
        "10/21/77",
        "10/21/99",
        "10/21/00",
        "76",
        "75",
        "99",
        "00",
        "50",
        "Oct 21 0015",
        "Oct 21 015",
        "21 Oct 115",
        "21 Oct 15 12:00",
        "Oct 21 5",
        "Oct 5",
    ],
    # Month names and abbreviations, in every case, with and without dots, in various orders.
    [
        "Oct 21 2015",
        "21 Oct 2015",
        "2015 Oct 21",
        "Oct 2015 21",
        "21 2015 Oct",
        "2015 21 Oct",
        "October 21, 2015",
        "October 21 2015",
        "21 October 2015",
        "21st of October 2015",
        "Oct 21st, 2015",
        "the 21st of October, 2015",
        "October the 21st, 2015",
        "21st October 2015",
        "October 21st",
        "1st Oct 2015",
        "2nd Oct 2015",
        "3rd Oct 2015",
        "4th Oct 2015",
        "11th Oct 2015",
        "22nd Oct 2015",
        "23rd Oct 2015",
        "21th Oct 2015",
        "oct 21 2015",
        "OCT 21 2015",
        "oCt 21 2015",
        "Oct. 21 2015",
        "Oct. 21, 2015",
        "21. Oct. 2015",
        "21-Oct-2015",
        "21-oct-15",
        "21/Oct/2015",
        "2015-Oct-21",
        "2015/Oct/21",
        "Oct-21-2015",
        "21Oct2015",
        "Oct21 2015",
        "october 21 2015",
        "OCTOBER 21 2015",
        "Octo 21 2015",
        "Octob 21 2015",
        "Sep 21 2015",
        "Sept 21 2015",
        "Sept. 21 2015",
        "SEPT 21 2015",
        "September 21 2015",
        "sept 21 2015",
        "Septem 21 2015",
        "Jan 1 2015",
        "January 1 2015",
        "Feb 28 2015",
        "February 28 2015",
        "Mar 1 2015",
        "March 1 2015",
        "Apr 1 2015",
        "April 1 2015",
        "May 1 2015",
        "MAY 1 2015",
        "Jun 1 2015",
        "June 1 2015",
        "Jul 1 2015",
        "July 1 2015",
        "Aug 1 2015",
        "August 1 2015",
        "Nov 1 2015",
        "November 1 2015",
        "Dec 31 2015",
        "December 31 2015",
        "Oct Nov 2015",
        "21 Oct Nov 2015",
        "Oct 21 Oct 2015",
        "Oktober 21 2015",
        "21 octobre 2015",
        "Okt 21 2015",
    ],
    # Weekday names, with a date, alone, and contradicting the date.
    [
        "Wed Oct 21 2015",
        "Wednesday, 21 October 2015",
        "Wednesday October 21 2015",
        "wed 2015-10-21",
        "2015-10-21 Wednesday",
        "Monday",
        "monday",
        "MONDAY",
        "Mon",
        "Tuesday",
        "Wednesday",
        "thu",
        "Thursday",
        "Fri",
        "Friday",
        "Sat",
        "Saturday",
        "Sun",
        "Sunday",
        "Tues",
        "Thur",
        "Thurs",
        "Weds",
        "Mon Oct 21 2015",
        "Sunday, 21 October 2015",
        "Mon 2015-10-21",
        "Monday Tuesday",
        "Monday 3pm",
        "Monday 2015",
        "Monday Oct",
        "Monday 21",
        "Mon.",
        "Wed, Oct 21",
    ],
    # Times of day and am/pm.
    [
        "3pm",
        "3 pm",
        "3PM",
        "3 PM",
        "3p",
        "3 p",
        "3a",
        "3am",
        "3:04 PM",
        "3:04pm",
        "3:04 am",
        "3:04 a.m.",
        "3:04 p.m.",
        "12am",
        "12 am",
        "12pm",
        "12 pm",
        "12:00 am",
        "12:30 am",
        "12:00 pm",
        "0am",
        "0pm",
        "13pm",
        "13:00 pm",
        "13am",
        "noon",
        "midnight",
        "15:04:05",
        "15:04",
        "1504",
        "150405",
        "15h04",
        "15h",
        "15h04m",
        "15h04m05s",
        "15h04m05",
        "15 h",
        "15:04:05.123456",
        "3:04:05.123456 pm",
        "3:04:05.1234567",
        "24:00",
        "24:00:00",
        "23:59:59",
        "23:59:60",
        "12:60",
        "25:00",
        "99:99",
        "3 o'clock",
        "5pm 2015-10-21",
        "2015-10-21 5pm",
        "2015-10-21 5 pm",
        "2015-10-21 17:00 pm",
        "2015-10-21 pm",
        "pm",
        "am",
        "3:04:05:06",
        "3:04:",
        ":04",
        "15.04",
        "15.04.05",
        "10 m",
        "10 s",
        "10 min",
        "10 minutes",
        "90 s",
        "3 hours",
    ],
    # Offsets and zone names; no tzinfos, as Nova: only UTC, GMT, Z and the local names are known.
    [
        "UTC",
        "GMT",
        "Z",
        "z",
        "utc",
        "gmt",
        "EST",
        "PST",
        "CET",
        "CEST",
        "BST",
        "EDT",
        "MSK",
        "IST",
        "JST",
        "UT",
        "UTC+3",
        "UTC-3",
        "UTC+03:00",
        "GMT-5",
        "GMT+5",
        "EST-5",
        "EST+5",
        "EST5EDT",
        "+0530",
        "-12:00",
        "+14:00",
        "+1500",
        "+2500",
        "+24:00",
        "+9999",
        "-0000",
        "+00",
        "+5",
        "Europe/Berlin",
        "America/New_York",
        "2015-10-21 12:00 UTC",
        "2015-10-21 12:00 GMT",
        "2015-10-21 12:00 Z",
        "2015-10-21 12:00 EST",
        "2015-10-21 12:00 PST",
        "2015-10-21 12:00 CEST",
        "2015-10-21 12:00 UTC+3",
        "2015-10-21 12:00 GMT+3",
        "2015-10-21 12:00 GMT-5",
        "2015-10-21 12:00 EST-5",
        "2015-10-21 12:00 EST+5",
        "2015-10-21 12:00 +0530",
        "2015-10-21 12:00 -12:00",
        "2015-10-21 12:00 +14:00",
        "2015-10-21 12:00 +1500",
        "2015-10-21 12:00 +2500",
        "2015-10-21 12:00 -05",
        "2015-10-21 12:00 Europe/Berlin",
        "2015-10-21 12:00 (UTC)",
        "2015-10-21 12:00 +0000 (UTC)",
        "2015-10-21 12:00 -0500 (EST)",
        "2015-10-21 12:00 UTC UTC",
        "2015-10-21 12:00 EST PST",
        "2015-10-21 UTC",
        "2015-10-21 +02:00",
        "2015-10-21T12:00:00 Z",
        "Wed Oct 21 07:28:00 UTC 2015",
        "Wed Oct 21 07:28:00 EDT 2015",
        "Wed Oct 21 07:28:00 CEST 2015",
        "Wed, 21 Oct 2015 07:28:00 +0000",
        "Wed, 21 Oct 2015 07:28:00 -0400",
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "Wed, 21 Oct 2015 07:28:00 EDT",
        "21 Oct 2015 07:28:00 +0200",
        "Wed Oct 21 07:28:00 2015",
        "Wed Oct  1 07:28:00 2015",
        "Wednesday, 21-Oct-15 07:28:00 GMT",
    ],
    # Fuzzy words around a date (fuzzy=True skips what it cannot read).
    [
        "before Oct 21 2015",
        "archive everything before 2015-10-21 please",
        "Today is 21 October 2015",
        "on the 21st",
        "the 21st",
        "21st",
        "at 5pm on 21/10/2015",
        "at 5 pm on Oct 21",
        "date: 2015-10-21",
        "Date: Wed, 21 Oct 2015 07:28:00 +0000",
        "v2 2015-10-21",
        "2015-10-21 v2",
        "release 2015-10-21 build 42",
        "rev42 2015-10-21",
        "2015-10-21 x86_64",
        "abc123 2015-10-21",
        "2015-10-21 and then some",
        "deleted before October 21st, 2015 at 3pm",
        "from 2015-10-21 to 2015-10-22",
        "since 2015",
        "in Oct",
        "week 43 of 2015",
        "2015-10-21 (Wednesday)",
        "[2015-10-21]",
        "<2015-10-21>",
        "\"2015-10-21\"",
        "'2015-10-21'",
        "2015-10-21.",
        "2015-10-21,",
        "2015-10-21;",
        "  2015-10-21  ",
        "\t2015-10-21\n",
        "2015-10-21\x00",
        "on 21 Oct 2015 at 07:28",
        "21 Oct 2015 at 07:28 in the morning",
        "Oct 21 2015 of the year",
        "a 2015-10-21",
        "an Oct 21 2015",
        "and 2015-10-21",
        "on 2015-10-21",
        "of 2015-10-21",
        "at 2015-10-21",
        "the day 21 Oct 2015",
        "ago 2015-10-21",
        "3 days ago",
        "last week",
        "next monday",
        "tomorrow",
        "2015-10-21 +02:00 local",
        "10 past 3",
        "2015-10-21 12:00 sharp",
    ],
    # Out of range, invalid, unusual and empty.
    [
        "2015-02-29",
        "2016-02-29",
        "2100-02-29",
        "2000-02-29",
        "2015-02-30",
        "2015-04-31",
        "31/04/2015",
        "32 Oct 2015",
        "0 Oct 2015",
        "2015-13-01",
        "2015-00-01",
        "2015-10-00",
        "2015-10-32",
        "0000-01-01",
        "0001-01-01",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31",
        "9999-12-31T23:59:59.999999",
        "9999-12-31T23:59:59-01:00",
        "10000-01-01",
        "1970-01-01",
        "1969-12-31T23:59:59",
        "1900-01-01",
        "1601-01-01",
        "2038-01-19T03:14:08",
        "-1",
        "-2015-10-21",
        "",
        "   ",
        "\t",
        "foo",
        "now",
        "today",
        "yesterday",
        "1",
        "12",
        "123",
        "1234",
        "12345",
        "123456",
        "1234567",
        "12345678",
        "123456789",
        "1234567890",
        "1445412480",
        "12345678901234",
        "99999999999999999999",
        "999999999999999999999999999999",
        "1e5",
        "1.5",
        "0x10",
        "0",
        "000",
        "0000",
        "00000000",
        "2015",
        "1999",
        "1000",
        "999",
        "3000",
        "Oct",
        "October",
        "Oct 2015",
        "2015 Oct",
        "21 Oct",
        "Oct 21",
        "21",
        "31",
        "32",
        "::",
        "--",
        "//",
        "..",
        ",",
        "-",
        "/",
        ":",
        ".",
        "2015-10-21 2015-10-22",
        "2015-10-21 2016",
        "21 Oct 2015 2016",
        "2015/10/21/22",
        "2015-10-21-22",
        "2015.10.21.22",
        "10/21/2015 10/22/2015",
        "2015--10--21",
        "2015//10//21",
        "２０１５-１０-２１",
        "٢٠١٥-١٠-٢١",
        "2015-10-２１",
        "Oct ２１ 2015",
        "2015\u201310\u201321",
        "2015\u00a010\u00a021",
        "\u0662\u0660\u0661\u0665",
        "Ｏｃｔ 21 2015",
    ],
    # Unix-style and log styles.
    [
        "2015-10-21 07:28:00,123",
        "2015-10-21 07:28:00.123",
        "2015-10-21 07:28:00,123456",
        "21/Oct/2015:07:28:00 +0000",
        "[21/Oct/2015:07:28:00 +0000]",
        "21/Oct/2015:07:28:00",
        "Oct 21 07:28:00",
        "Oct 21 07:28:00 host sshd[123]:",
        "Oct  1 07:28:00",
        "20151021 072800",
        "20151021072800",
        "2015-10-21_07:28:00",
        "2015-10-21 07:28",
        "2015/10/21 07:28:00",
        "2015-10-21T07:28:00.000000",
        "2015-10-21 07:28:00.000000+00:00",
        "2015-10-21 07:28:00 +0000",
        "2015-10-21T07:28:00+0000",
        "10/21/2015 07:28:00 AM",
        "10/21/2015 07:28:00 PM",
        "21.10.2015 07:28",
        "21.10.2015, 07:28",
        "Wed Oct 21 2015 07:28:00 GMT+0000 (Coordinated Universal Time)",
        "Wed Oct 21 2015 07:28:00 GMT+0200 (CEST)",
        "2015-10-21 07:28:00.123 UTC",
        "I1021 07:28:00.123456",
        "2015-10-21 07:28:00.123 INFO nova.compute",
        "1445412480.123",
        "@1445412480",
    ],
]


# Texts made of random pieces (seeded, so the file is the same on every run): the
# combinations no one writes on purpose, where a port of the parser goes wrong first.
RANDOM_TEXTS = 1500
RANDOM_SEED = 2015
WORDS = [
    "Jan", "October", "Sept", "sep", "MAY", "dec.", "Feb", "Mon", "Tuesday", "thu", "Sun",
    "Wed.", "am", "pm", "a", "p", "a.m.", "PM", "AM", "UTC", "GMT", "Z", "z", "EST", "CEST",
    "BRST", "X", "ABCDEF", "utc", "+", "-", ":", ":", "/", ".", ",", "(", ")", "'", ";", "T",
    "t", "h", "m", "s", "min", "hours", "of", "the", "at", "on", "st", "th", "and", "foo",
    "v2", "noon", " ", " ", " ", "  ", "\t", "\u0662\u0660\u0661\u0665", "\uff11\uff12",
    "\u00b2", "\u216b", "\u00e9", "\x00", "_", "inf", "nan", "Infinity", "e", "1e5",
    "-0500", "+05:30", "(UTC)", "12:00:00", "2015-10-21", "10/21/15", "21.10.2015",
]


def random_number(rng):
    digits = "".join(rng.choice("0123456789") for _ in range(rng.choice([1, 1, 2, 2, 2, 3, 4, 4, 5, 6, 7, 8, 12, 14])))
    if rng.random() < 0.1:
        digits += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 7)))
    if rng.random() < 0.05:
        digits += "," + "".join(rng.choice("0123456789") for _ in range(2))
    return digits


def random_texts(seen):
    rng = random.Random(RANDOM_SEED)
    made = 0
    while made < RANDOM_TEXTS:
        pieces = [random_number(rng) if rng.random() < 0.35 else rng.choice(WORDS)
                  for _ in range(rng.randint(1, 9))]
        text = "".join(pieces)
        if text not in seen:
            seen.add(text)
            made += 1
            yield text


def texts():
    seen = set()
    for group in GROUPS:
        for text in group:
            if text in seen:
                raise SystemExit("duplicate text: %r" % text)
            seen.add(text)
            yield text
    yield from random_texts(seen)


def read(text):
    """What Nova gets from dateutil.parser.parse(text, fuzzy=True), with the date pinned."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = parser.parse(text, fuzzy=True, default=DEFAULT, parserinfo=FixedYearParserInfo())
    except Exception as error:  # Every exception is a refusal to Nova.
        return {"text": text, "refused": "%s: %s" % (type(error).__name__, error)}
    vector = {"text": text}
    try:
        offset = parsed.utcoffset()
        if offset is None:
            instant = parsed.replace(tzinfo=timezone.utc)
        else:
            instant = parsed.astimezone(timezone.utc)
    except Exception as error:
        # dateutil returned a result that is no instant: an offset of a day or more (which
        # datetime rejects on first use), or one that moves the instant out of years 1-9999.
        return {"text": text, "refused": "%s: %s" % (type(error).__name__, error)}
    # Not strftime: it does not pad years below 1000 to four digits on every platform.
    vector["utc"] = "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ" % (
        instant.year, instant.month, instant.day,
        instant.hour, instant.minute, instant.second, instant.microsecond,
    )
    if offset is not None:
        vector["offset_seconds"] = int(offset.total_seconds())
    return vector


def main():
    if os.environ.get("TZ") != "UTC":
        raise SystemExit("run with TZ=UTC in the environment (dateutil reads time.tzname as the local zone)")
    time.tzset()
    vectors = [read(text) for text in texts()]
    parsed = sum(1 for vector in vectors if "utc" in vector)
    refused = len(vectors) - parsed
    print("%d vectors: %d parsed, %d refused" % (len(vectors), parsed, refused), file=sys.stderr)
    if len(vectors) < 350 or parsed < 100 or refused < 50:
        raise SystemExit("too few vectors of a kind")
    # One vector per line keeps diffs of the data file readable.
    out = [
        "{",
        ' "generator": "scripts/dateutil_vectors.py",',
        ' "dateutil": %s,' % json.dumps(DATEUTIL_VERSION),
        ' "default": %s,' % json.dumps(DEFAULT.isoformat()),
        ' "year": %d,' % YEAR,
        ' "vectors": [',
        ",\n".join("  " + json.dumps(vector) for vector in vectors),
        " ]",
        "}",
    ]
    print("\n".join(out))


if __name__ == "__main__":
    main()
