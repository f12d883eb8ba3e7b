FROM --platform=linux/x86_64 exec.env.x86_64.f44ba8a93ac44874a03f40:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
