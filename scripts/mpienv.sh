# Sourced by scripts and tests: Open MPI as root, on loopback only.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_osc=sm,pt2pt OMPI_MCA_mtl=^ofi,psm,psm2
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo PMIX_MCA_ptl_base_if_include=lo
export OMPI_MCA_hwloc_base_binding_policy=none
