/* The types Open MPI's message-queue library (libompi_dbg_msgq.so) asks
 * its debugger for, declared once each so that a build with -g carries
 * their DWARF. Built from the Open MPI development headers that belong
 * to the installed libmpi (the same structures, the same opal_config.h),
 * it stands in for libmpi's own debugging information, which a
 * distribution's stripped libmpi lacks: sdm's servers read the types
 * from it (mpiq/dll.go) when the rank's libmpi has the build id the
 * object is named by. */
#include "ompi_config.h"
#include "mpi.h"
#include "opal/class/opal_list.h"
#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_pointer_array.h"
#include "opal/datatype/opal_datatype.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/request/request.h"
#include "ompi/group/group.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/pml/base/pml_base_request.h"
#include "ompi/mca/pml/base/pml_base_sendreq.h"
#include "ompi/mca/pml/base/pml_base_recvreq.h"
#include "ompi/mca/topo/topo.h"

opal_list_item_t sdm_opal_list_item;
opal_list_t sdm_opal_list;
opal_free_list_item_t sdm_opal_free_list_item;
opal_free_list_t sdm_opal_free_list;
opal_hash_table_t sdm_opal_hash_table;
opal_pointer_array_t sdm_opal_pointer_array;
opal_datatype_t sdm_opal_datatype;
ompi_datatype_t sdm_ompi_datatype;
ompi_request_t sdm_ompi_request;
ompi_group_t sdm_ompi_group;
ompi_communicator_t sdm_ompi_communicator;
ompi_status_public_t sdm_ompi_status_public;
mca_pml_base_request_t sdm_mca_pml_base_request;
mca_pml_base_send_request_t sdm_mca_pml_base_send_request;
mca_pml_base_recv_request_t sdm_mca_pml_base_recv_request;
mca_topo_base_module_t sdm_mca_topo_base_module;
mca_topo_base_comm_cart_2_2_0_t sdm_mca_topo_base_comm_cart;
mca_topo_base_comm_graph_2_2_0_t sdm_mca_topo_base_comm_graph;
mca_topo_base_comm_dist_graph_2_2_0_t sdm_mca_topo_base_comm_dist_graph;
