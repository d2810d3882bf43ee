#!/usr/bin/env python3
"""A "browser" for the OAuth scenarios ($BROWSER): opens the authorization URL and follows its
redirects, as a person signing in would, so the code reaches flowrun's loopback listener."""

import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=30) as page:
    page.read()
