"""SYCL extension namespaces (`sycl::ext`)."""
