"""The built-in demo: a scripted help desk (`janux.demo.cast`) and its scenarios (`janux.demo.scenarios`).

Not part of the runtime library: `janux demo` and `janux serve --demo` run these to fill a store
with traces that exercise every part of the trace contract, offline and deterministically.
"""
