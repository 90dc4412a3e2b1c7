# test_trace counts allocations through the linker's --wrap.
target_link_options(test_trace PRIVATE "LINKER:--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=posix_memalign")
