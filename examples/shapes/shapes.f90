! shapes: a Fortran program with an array and a derived type, for
! editors' views of variables.
program shapes
  implicit none
  type point
    real :: x, y
  end type point
  type(point) :: origin
  real :: grid(4)
  integer :: i
  origin%x = 1.5
  origin%y = 2.5
  do i = 1, 4
    grid(i) = i * 0.5
  end do
  call report(origin, grid)   ! everything is set here
contains
  subroutine report(p, g)
    type(point), intent(in) :: p
    real, intent(in) :: g(4)
    print *, p%x + p%y + sum(g)
  end subroutine report
end program shapes
