! SPDX-License-Identifier: MIT
! An MPI program in Fortran (`use mpi`) with known answers for 2 ranks
! (tests/integration/test_mpi.py): each call is made a fixed number of times with fixed
! sizes; the MPI_IN_PLACE reduction checks that the Fortran sentinel keeps its meaning.
program mpi_fortran
  use mpi
  implicit none
  integer :: ierr, rank, nranks, peer, i
  integer :: ints(10), bc(8), sums(3)
  double precision :: dout(5), din(5)
  integer :: reqs(2)
  integer :: status(MPI_STATUS_SIZE)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  if (nranks /= 2) then
    call MPI_Finalize(ierr)
    stop 2
  end if
  peer = 1 - rank
  ints = rank
  dout = 1.0d0
  ! 40 bytes, tag 4, 0 -> 1
  if (rank == 0) then
    call MPI_Send(ints, 10, MPI_INTEGER, 1, 4, MPI_COMM_WORLD, ierr)
  else
    call MPI_Recv(ints, 10, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &
                  status, ierr)
  end if
  ! 40 bytes each way, tag 6
  call MPI_Irecv(din, 5, MPI_DOUBLE_PRECISION, peer, 6, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(dout, 5, MPI_DOUBLE_PRECISION, peer, 6, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  bc = 7
  call MPI_Bcast(bc, 8, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(ints, sums, 3, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  do i = 1, 2
    call MPI_Allreduce(ints, sums, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  sums = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (sums(1) == 3) then
    print '(a,i0)', 'in-place sum right on rank ', rank
  else
    print '(a,i0)', 'in-place sum WRONG on rank ', rank
  end if
  call MPI_Finalize(ierr)
end program mpi_fortran
