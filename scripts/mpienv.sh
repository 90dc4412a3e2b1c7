# Sourced by scripts and tests: Open MPI as root, on loopback only.
#  - btl self,vader: the ranks talk through shared memory (no TCP transport, so
#    they listen on nothing); pml ob1, no OFI/PSM matching transports.
#  - oob_tcp_if_include=lo: mpirun's out-of-band channel advertises and
#    connects to 127.0.0.1 only. Its listening sockets still bind 0.0.0.0 and
#    [::] (Open MPI 4.1 binds the wildcard address and has no setting for it;
#    oob_tcp_disable_ipv6_family leaves the [::] socket too); tests/cli/
#    test_mpi_listen.sh checks that these two are the only listeners off
#    loopback. mpirun's PMIx server (for tools) listens on 127.0.0.1. To have
#    no socket reachable from another interface at all, run mpirun inside a
#    network namespace of its own: unshare -n sh -c 'ip link set lo up; mpirun ...'
#  - btl_tcp_if_include=lo, PMIx on lo: the same for the TCP transport and
#    PMIx, should they be enabled.
#  - hwloc_base_binding_policy=none: as --bind-to none (rank-threads need the cores).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_osc=sm,pt2pt OMPI_MCA_mtl=^ofi,psm,psm2
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo PMIX_MCA_ptl_base_if_include=lo
export OMPI_MCA_hwloc_base_binding_policy=none
