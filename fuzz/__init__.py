"""Differential testing of vksycl's compiler: random kernels (`generate`) run on a device
through vksycl's public API (`device`) and by a host model of the semantics vksycl
documents (`interpret`), compared value by value; a failing program is reduced
(`reduce`) to a reproducer file (`campaign`). `python -m fuzz --seed S --count N`."""
