! pending, in Fortran through the mpi_f08 module: the hang of pending.c.
! Rank 0 has a receive posted from rank 1, tag 5, and waits in MPI_Recv
! from rank 1, tag 7; ranks 1 and 2 share a communicator of their own,
! where rank 1 waits in MPI_Barrier and rank 2 in MPI_Recv from its rank
! 0 there (world rank 1), tag 9.
program pending
  use mpi_f08
  implicit none
  type(MPI_Comm) :: sub
  type(MPI_Request) :: req
  integer :: rank, color
  integer :: msg(4)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  color = 0
  if (rank > 0) color = 1
  call MPI_Comm_split(MPI_COMM_WORLD, color, rank, sub)
  if (rank == 0) then
    call MPI_Irecv(msg, 4, MPI_INTEGER, 1, 5, MPI_COMM_WORLD, req)
    call MPI_Recv(msg, 1, MPI_INTEGER, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  else if (rank == 1) then
    call MPI_Barrier(sub)
  else
    call MPI_Recv(msg, 4, MPI_INTEGER, 0, 9, sub, MPI_STATUS_IGNORE)
  end if
  call MPI_Finalize()
end program pending
