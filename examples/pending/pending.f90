! pending, in Fortran: the hang of pending.c through the mpi module. Rank
! 0 has a receive posted from rank 1, tag 5, and waits in MPI_Recv from
! rank 1, tag 7; ranks 1 and 2 share a communicator of their own, where
! rank 1 waits in MPI_Barrier and rank 2 in MPI_Recv from its rank 0
! there (world rank 1), tag 9.
program pending
  use mpi
  implicit none
  integer :: rank, sub, req, ierr, color
  integer :: msg(4)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  color = 0
  if (rank > 0) color = 1
  call MPI_Comm_split(MPI_COMM_WORLD, color, rank, sub, ierr)
  if (rank == 0) then
    call MPI_Irecv(msg, 4, MPI_INTEGER, 1, 5, MPI_COMM_WORLD, req, ierr)
    call MPI_Recv(msg, 1, MPI_INTEGER, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  else if (rank == 1) then
    call MPI_Barrier(sub, ierr)
  else
    call MPI_Recv(msg, 4, MPI_INTEGER, 0, 9, sub, MPI_STATUS_IGNORE, ierr)
  end if
  call MPI_Finalize(ierr)
end program pending
