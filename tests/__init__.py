"""gtop's tests: a regular package, so `tests.*` imports never resolve to a `tests`
package that some installed distribution ships in site-packages."""
