! SPDX-License-Identifier: MIT
! mpi_fortran.f90 through `use mpi_f08` (tests/integration/test_mpi.py): the same calls,
! sizes and answers for 2 ranks, ierror left out of some calls (optional in mpi_f08).
program mpi_f08_fixture
  use mpi_f08
  implicit none
  integer :: ierr, rank, nranks, peer, i
  integer :: ints(10), bc(8), sums(3)
  double precision :: dout(5), din(5)
  type(MPI_Request) :: reqs(2)
  type(MPI_Status) :: status

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
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
  call MPI_Irecv(din, 5, MPI_DOUBLE_PRECISION, peer, 6, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(dout, 5, MPI_DOUBLE_PRECISION, peer, 6, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call MPI_Barrier(MPI_COMM_WORLD)
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
  call MPI_Finalize()
end program mpi_f08_fixture
