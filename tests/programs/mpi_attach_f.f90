! SPDX-License-Identifier: MIT
! A Fortran MPI program (`use mpi`) for 2 ranks that syscope attaches to while it runs
! (tests/integration/test_attach_mpi.py), as mpi_attach.c in C. Each round: rank 0 sends
! 1000 integers (tag 5) to rank 1, which checks them; both exchange 10 doubles (tag 6) with
! MPI_Isend, MPI_Irecv and MPI_Waitall; an MPI_Allreduce tells both whether to stop (rank 0
! stops once the file argv(1) exists, or after 300 s of CPU time). Rank 0 prints "pid=PID"
! first, "round=1" after its first round, and "done rounds=N errors=E" at the end.
program mpi_attach_f
  use mpi
  use iso_c_binding, only: c_int
  implicit none
  interface
    integer(c_int) function usleep(us) bind(C, name="usleep")
      import :: c_int
      integer(c_int), value :: us
    end function usleep
  end interface
  integer, parameter :: n_ints = 1000, n_doubles = 10
  integer :: ierr, rank, nranks, peer, i, round, errors, total, want, stop_now, rc
  integer :: ints(n_ints), reqs(2), status(MPI_STATUS_SIZE)
  double precision :: dout(n_doubles), din(n_doubles)
  character(len=4096) :: stop_file
  logical :: there
  real :: t0, t

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  if (nranks /= 2) then
    print '(a,i0)', 'mpi_attach_f: run it with 2 ranks (mpirun -np 2), not ', nranks
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  stop_file = '/nonexistent'
  if (command_argument_count() >= 1) call get_command_argument(1, stop_file)
  if (rank == 0) then
    print '(a,i0)', 'pid=', getpid()
    flush(6)
  end if
  peer = 1 - rank
  errors = 0
  round = 0
  stop_now = 0
  call cpu_time(t0)
  do while (stop_now == 0)
    if (rank == 0) then
      do i = 1, n_ints
        ints(i) = round + i
      end do
      call MPI_Send(ints, n_ints, MPI_INTEGER, 1, 5, MPI_COMM_WORLD, ierr)
    else
      call MPI_Recv(ints, n_ints, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, status, ierr)
      do i = 1, n_ints
        if (ints(i) /= round + i) errors = errors + 1
      end do
    end if
    dout = rank + round
    call MPI_Irecv(din, n_doubles, MPI_DOUBLE_PRECISION, peer, 6, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_Isend(dout, n_doubles, MPI_DOUBLE_PRECISION, peer, 6, MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
    do i = 1, n_doubles
      if (din(i) /= peer + round) errors = errors + 1
    end do
    want = 0
    if (rank == 0) then
      inquire(file=trim(stop_file), exist=there)
      call cpu_time(t)
      if (there .or. t - t0 > 300.0) want = 1
    end if
    call MPI_Allreduce(want, stop_now, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
    if (rank == 0 .and. round == 0) then
      print '(a)', 'round=1'
      flush(6)
    end if
    round = round + 1
    rc = usleep(2000)
  end do
  call MPI_Reduce(errors, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a,i0)', 'done rounds=', round, ' errors=', total
  call MPI_Finalize(ierr)
  if (rank == 0 .and. total /= 0) stop 1
end program mpi_attach_f
