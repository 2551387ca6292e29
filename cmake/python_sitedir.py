"""Where `cmake --install` puts the Python package for a prefix: the prefix's site-packages directory that this
Python already searches (a prefix that is Python's own, or /usr/local on Debian), else the standard
<prefix>/lib/pythonX.Y/site-packages (add it to PYTHONPATH). Prints the directory. usage: python_sitedir.py PREFIX"""
import os
import site
import sys
import sysconfig

prefix = os.path.abspath(sys.argv[1])
on_path = [d for d in site.getsitepackages([prefix]) if os.path.abspath(d) in map(os.path.abspath, sys.path)]
print(on_path[0] if on_path else
      sysconfig.get_path("purelib", "posix_prefix", {"base": prefix, "platbase": prefix, "installed_base": prefix}))
